//go:build race

package procworld_test

// raceBuild is true under the race detector, where TestUnsafeShare samples
// a smaller area (drainage cells cost about four times as much).
const raceBuild = true
