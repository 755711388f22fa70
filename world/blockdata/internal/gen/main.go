// Command gen writes the block collision tables of package blockdata from
// the pinned minecraft-data npm package.
//
// It downloads the package tarball (or reads a local copy given with
// -tarball), refuses it unless its SHA-512 matches the pinned integrity,
// reads the data straight out of the .tgz and writes the generated Go file
// and the notice file beside it. A verified download is kept in a cache
// directory so later runs, and the test that compares the committed file
// with the generator's output, can work offline.
//
// Usage (from the blockdata directory, as go generate runs it):
//
//	go run ./internal/gen [-tarball FILE] [-cache DIR] [-out tables_gen.go] [-notice DATA.md]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// pinned is the data set the tables are generated from.
var pinned = Package{
	Name:      "minecraft-data",
	Version:   "3.119.0",
	URL:       "https://registry.npmjs.org/minecraft-data/-/minecraft-data-3.119.0.tgz",
	Integrity: "sha512-RElo0o2RooEzpeQO+QEHzTmHVTgOdbbomGQYBmWIaU1pupEmAItQb+LpJyL2EDXmpKicOU4swtBVzwIWae5l5g==",
}

// maxTarball bounds the download (the pinned tarball is about 27 MB).
const maxTarball = 256 << 20

// cacheName is the pinned tarball's file name in the cache directory.
func cacheName() string { return pinned.Name + "-" + pinned.Version + ".tgz" }

// defaultCache is the cache directory used when -cache is not given, or ""
// when the user has no cache directory.
func defaultCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "rtpengine", "blockdata")
}

func main() {
	tarball := flag.String("tarball", "", "read the package from this local .tgz instead of downloading it")
	cache := flag.String("cache", defaultCache(), "keep the verified download here (empty: no cache)")
	out := flag.String("out", "tables_gen.go", "generated Go file")
	notice := flag.String("notice", "DATA.md", "notice file")
	flag.Parse()
	if err := run(*tarball, *cache, *out, *notice); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(tarball, cache, out, notice string) error {
	tgz, err := fetch(tarball, cache)
	if err != nil {
		return err
	}
	src, note, err := generate(tgz, pinned)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	if err := os.WriteFile(notice, note, 0o644); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	return nil
}

// fetch returns the verified tarball: the local file when given, else the
// cached copy when it verifies, else a fresh download (then cached).
func fetch(tarball, cache string) ([]byte, error) {
	if tarball != "" {
		b, err := os.ReadFile(tarball)
		if err != nil {
			return nil, fmt.Errorf("gen: %w", err)
		}
		return b, verify(b, pinned.Integrity)
	}
	var cached string
	if cache != "" {
		cached = filepath.Join(cache, cacheName())
		if b, err := os.ReadFile(cached); err == nil && verify(b, pinned.Integrity) == nil {
			return b, nil
		}
	}
	b, err := download(pinned.URL)
	if err != nil {
		return nil, err
	}
	if err := verify(b, pinned.Integrity); err != nil {
		return nil, err
	}
	if cached != "" {
		// The cache only saves a download; failing to write it is not fatal.
		if err := writeCache(cached, b); err != nil {
			fmt.Fprintln(os.Stderr, "gen: not cached:", err)
		}
	}
	return b, nil
}

func download(url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("gen: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("gen: download: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("gen: download %s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxTarball+1))
	if err != nil {
		return nil, fmt.Errorf("gen: download: %w", err)
	}
	if len(b) > maxTarball {
		return nil, errors.New("gen: download: tarball too large")
	}
	return b, nil
}

// writeCache stores b at path atomically (a temporary file renamed).
func writeCache(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".download-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
