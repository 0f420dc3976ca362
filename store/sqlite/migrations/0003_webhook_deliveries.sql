-- Webhook deliveries already stored, so that a redelivery is stored (and
-- applied) once even after its events were processed and deleted.
CREATE TABLE webhook_deliveries (
    source      TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    received_at TEXT NOT NULL,
    PRIMARY KEY (source, delivery_id)
) STRICT;
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at);
