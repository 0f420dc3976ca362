package postgres

// DueItemsSQL is the sweep's query, for the plan test.
const DueItemsSQL = dueItemsSQL
