//go:build !race

package anvil

const raceBuild = false
