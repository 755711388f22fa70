package engine

import (
	"context"
	"errors"
	"io"

	"github.com/rtpengine/rtp/config"
)

var errNotYet = errors.New("engine: not implemented yet")

func (e *Engine) Cancel(id uint64) error                              { return errNotYet }
func (e *Engine) Join(region, player string) error                    { return errNotYet }
func (e *Engine) Quit(region, player string) error                    { return errNotYet }
func (e *Engine) OpenQueue(region, player string, capacity int) error { return errNotYet }
func (e *Engine) CloseQueue(region, player string) error              { return errNotYet }
func (e *Engine) Reserve(region, token string) (Reservation, error)   { return Reservation{}, errNotYet }
func (e *Engine) Redeem(region, token string) (Location, error)       { return Location{}, errNotYet }
func (e *Engine) Release(region, token string) error                  { return errNotYet }
func (e *Engine) ScanReset(ctx context.Context, region string) error  { return errNotYet }
func (e *Engine) ScanPause(region string) error                       { return errNotYet }
func (e *Engine) ScanResume(region string) error                      { return errNotYet }
func (e *Engine) ExportMemory(region string, w io.Writer) error       { return errNotYet }
func (e *Engine) Reload(ctx context.Context, cfg *config.Config) error {
	return errNotYet
}
func (e *Engine) Ready() error { return errNotYet }
