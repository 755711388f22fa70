//go:build race

package anvil

// raceBuild is true under the race detector, where the fixture oracle
// samples the unfinished chunks instead of reading them all.
const raceBuild = true
