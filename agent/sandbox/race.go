//go:build race

package sandbox

// raceFactor multiplies a worker's memory headroom under the race detector, whose shadow
// memory counts against the address space.
const raceFactor = 8
