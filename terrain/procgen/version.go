package procgen

// Version names the generator's arithmetic. Any change to what a tile
// contains for the same Params and request must change Version, so archived
// tiles from the old arithmetic can never answer for the new one.
// TestFingerprint enforces it: it hashes two reference tiles and compares
// them with the fingerprints pinned below.
const Version = "1"

// Fingerprints of the reference tiles (see fingerprint_test.go): SHA-256 in
// hex over the elevation, water and cover arrays in little-endian followed
// by Min and Max.
const (
	fingerprintDry = "611292fc3cf5dbe6b8275338d82a73ac7ff4657047635bc02f2a54d8f9a47e98"
	fingerprintWet = "4d3b66cf8c35d775a095c243814ba9704322618c6d16572363dc373c768d873b"
)
