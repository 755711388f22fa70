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
	fingerprintDry = "99481e4c5682ead283ff63176a8d2a1380f71b94becd57b3ac6f849e2634ead5"
	fingerprintWet = "c7d14907af598f60f605878e3116a3ff48980df30af2aa4236803ea8c196c226"
)
