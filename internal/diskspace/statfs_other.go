//go:build !unix

package diskspace

func of(string) (Usage, error) { return Usage{}, ErrUnsupported }
