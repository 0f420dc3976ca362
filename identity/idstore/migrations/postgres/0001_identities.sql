-- What the service holds per identity (package identity): the freezes
-- admins set, and the count of each write budget per hour window, so
-- that every instance on the database counts against the same budget.
CREATE TABLE id_freezes (
    identity  text PRIMARY KEY,
    frozen_by text NOT NULL,
    reason    text NOT NULL,
    frozen_at timestamptz NOT NULL
);

-- One row per identity, budget and window (its start, in Unix seconds);
-- a spend forgets the identity's earlier windows of the budget.
CREATE TABLE id_budget_spend (
    identity     text NOT NULL,
    budget       text NOT NULL,
    window_start bigint NOT NULL,
    spent        bigint NOT NULL,
    PRIMARY KEY (identity, budget, window_start)
);
