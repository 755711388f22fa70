package engine

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rtpengine/rtp/lease/token"
)

// NetworkSecretFile is the file, in the data folder, holding the secret
// that keys the network tokens of every region whose network sink has no
// secret_file configured. The engine makes it on the first start that
// needs it (32 random bytes, mode 0600) and reads it on every later one,
// so that tokens minted before a restart are still accepted after it. A
// configured secret_file wins; servers of one network share that one.
const NetworkSecretFile = "network-secret"

// networkSecretLen is the length of a generated network secret.
const networkSecretLen = 32

// maxNetworkSecretFile bounds the size of NetworkSecretFile.
const maxNetworkSecretFile = 4 << 10

// networkSecret returns the secret of a network sink configured as n:
// its Secret, or else the data folder's NetworkSecretFile.
func (e *Engine) networkSecret(n NetworkSpec) ([]byte, error) {
	if n.Secret != nil {
		if len(n.Secret) < token.MinSecretLen {
			return nil, fmt.Errorf("engine: network secret: shorter than %d bytes", token.MinSecretLen)
		}
		return bytes.Clone(n.Secret), nil
	}
	path := inDir(e.spec.DataDir, NetworkSecretFile)
	b, err := loadOrCreateSecret(path)
	if err != nil {
		return nil, fmt.Errorf("engine: network secret: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		e.log.Warn("engine: the network secret file is readable by other users; make it 0600", "path", path, "mode", fi.Mode().Perm())
	}
	return b, nil
}

// loadOrCreateSecret returns the secret held by the file at path, first
// making it, with networkSecretLen random bytes and mode 0600, when there
// is none. The file appears whole or not at all: it is written beside,
// synced and then linked into place, so that a crash leaves no short
// secret and two starts racing agree on one. Errors never hold the
// secret.
func loadOrCreateSecret(path string) ([]byte, error) {
	b, err := readSecretFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return b, err
	}
	secret := make([]byte, networkSecretLen)
	_, _ = rand.Read(secret) // never fails (crypto/rand)
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return nil, err
	}
	if _, err := tmp.Write(secret); err != nil {
		_ = tmp.Close()
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readSecretFile(path) // another start made it first
		}
		return nil, err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return secret, nil
}

// readSecretFile reads a secret file: at least token.MinSecretLen and
// at most maxNetworkSecretFile bytes, used as they are.
func readSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxNetworkSecretFile+1))
	switch {
	case err != nil:
		return nil, err
	case len(b) > maxNetworkSecretFile:
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxNetworkSecretFile)
	case len(b) < token.MinSecretLen:
		return nil, fmt.Errorf("%s: %d bytes, shorter than %d (delete it to make a new one; tokens minted under it are then refused)", path, len(b), token.MinSecretLen)
	case bytes.Count(b, []byte{0}) == len(b):
		return nil, fmt.Errorf("%s: all zero bytes (delete it to make a new one)", path)
	}
	return b, nil
}
