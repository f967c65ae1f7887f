//go:build !race

package sandbox

const raceFactor = 1
