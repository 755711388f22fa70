package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// maxFile bounds the size of one file read out of the tarball, so a
// corrupt archive cannot make the generator allocate without limit.
const maxFile = 64 << 20

// verify checks data against an npm integrity string ("sha512-" followed by
// the base64 SHA-512 digest). Only sha512 is accepted.
func verify(data []byte, integrity string) error {
	want, ok := strings.CutPrefix(integrity, "sha512-")
	if !ok {
		return fmt.Errorf("gen: integrity %q: only sha512 is accepted", integrity)
	}
	sum := sha512.Sum512(data)
	if got := base64.StdEncoding.EncodeToString(sum[:]); got != want {
		return fmt.Errorf("gen: tarball integrity mismatch: got sha512-%s, want %s", got, integrity)
	}
	return nil
}

// files is the part of the package tarball the generator reads, keyed by
// path inside the package ("package.json",
// "minecraft-data/data/dataPaths.json", ...).
type files map[string][]byte

// wanted reports whether the generator needs the tarball member at p (a
// path inside the package).
func wanted(p string) bool {
	switch p {
	case "package.json", "LICENSE", "LICENSE.md", "LICENSE.txt",
		"minecraft-data/data/dataPaths.json",
		"minecraft-data/data/pc/common/protocolVersions.json":
		return true
	}
	if !strings.HasPrefix(p, "minecraft-data/data/pc/") {
		return false
	}
	base := path.Base(p)
	return base == "blocks.json" || base == "blockCollisionShapes.json"
}

// readTarball extracts the members the generator needs from an npm package
// tarball (a gzip-compressed tar whose members sit under "package/").
func readTarball(tgz []byte) (files, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, fmt.Errorf("gen: tarball: %w", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	out := files{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("gen: tarball: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name, ok := strings.CutPrefix(path.Clean(h.Name), "package/")
		if !ok || !wanted(name) {
			continue
		}
		if h.Size > maxFile {
			return nil, fmt.Errorf("gen: tarball: %s: %d bytes is too large", name, h.Size)
		}
		b, err := io.ReadAll(io.LimitReader(tr, maxFile))
		if err != nil {
			return nil, fmt.Errorf("gen: tarball: %s: %w", name, err)
		}
		out[name] = b
	}
	return out, nil
}

// dataFile returns the data file at dir/name ("pc/1.8", "blocks.json").
func (f files) dataFile(dir, name string) ([]byte, error) {
	p := path.Join("minecraft-data/data", dir, name)
	b, ok := f[p]
	if !ok {
		return nil, fmt.Errorf("gen: %s missing from the tarball", p)
	}
	return b, nil
}
