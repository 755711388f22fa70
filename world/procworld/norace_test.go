//go:build !race

package procworld_test

const raceBuild = false
