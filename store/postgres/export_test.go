package postgres

// DueItemsSQL is the sweep's query, for the plan test.
const DueItemsSQL = dueItemsSQL

// ClaimSQL is the batch claim's statement, for the plan test.
var ClaimSQL = claimSQL
