package engine

// MaxBatch is how many events one write carries at most.
const MaxBatch = maxBatch
