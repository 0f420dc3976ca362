-- Webhook deliveries already stored, so that a redelivery is stored (and
-- applied) once even after its events were processed and deleted.
CREATE TABLE webhook_deliveries (
    source      text NOT NULL,
    delivery_id text NOT NULL,
    received_at timestamptz NOT NULL,
    PRIMARY KEY (source, delivery_id)
);
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at);
