package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/rtpengine/rtp/api"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/verify/claims"
)

// ClaimStore is what the claims routes need of a claims store: list a
// world's claims, add one, remove one. *claims.Store implements it.
//
// Add fails with an error wrapping claims.ErrInvalidClaim for a claim it
// refuses (answered 400 invalid); a store that is closed fails with an
// error wrapping claims.ErrClosed (answered 503 shutdown). Remove reports
// whether a claim of that id existed. A store that also has a method
// Len() int (as *claims.Store does) feeds the rtp_claims metric.
type ClaimStore interface {
	List(ctx context.Context, world string) ([]claims.Claim, error)
	Add(ctx context.Context, c claims.Claim) (claims.Claim, error)
	Remove(ctx context.Context, id int64) (bool, error)
}

var _ ClaimStore = (*claims.Store)(nil)

// claimsOwner is an engine that owns a claims store, as *engine.Engine
// does; New takes the store from it when Options.Claims is nil.
type claimsOwner interface {
	Claims() *claims.Store
}

// claimStoreOf resolves Options.Claims: the store given, or e's own.
func claimStoreOf(e Engine, given ClaimStore) (ClaimStore, error) {
	if given != nil {
		return given, nil
	}
	if o, ok := e.(claimsOwner); ok {
		if cs := o.Claims(); cs != nil {
			return cs, nil
		}
	}
	return nil, errors.New("server: no claims store: set Options.Claims, or pass an engine whose Claims method returns one")
}

// chunkChanger is an engine that takes the chunks a game server reports
// changed, as *engine.Engine does; POST /v1/worlds/{world}/changes needs
// one.
type chunkChanger interface {
	ChunksChanged(world string, chunks []geom.Chunk) (engine.ChangeReport, error)
}

var _ chunkChanger = (*engine.Engine)(nil)

// changes answers POST /v1/worlds/{world}/changes: the engine drops the
// cached places of the chunks and holds them until they are saved
// (engine.Engine.ChunksChanged).
func (s *Server) changes(w http.ResponseWriter, r *http.Request) error {
	var b changesBody
	if err := s.decodeBody(w, r, &b); err != nil {
		return err
	}
	cc, ok := s.e.(chunkChanger)
	if !ok {
		return notFound(CodeUnknownWorld, "this engine follows no world's changes")
	}
	chunks := make([]geom.Chunk, len(b.Chunks))
	for i, c := range b.Chunks {
		chunks[i] = geom.Chunk{X: c[0], Z: c[1]}
	}
	rep, err := cc.ChunksChanged(r.PathValue("world"), chunks)
	if err != nil {
		return err
	}
	return s.writeJSON(w, http.StatusOK, api.Changes{Chunks: rep.Chunks, Held: rep.Held, Forgotten: rep.Forgotten, Dropped: rep.Dropped})
}
