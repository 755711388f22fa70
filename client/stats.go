package client

import "github.com/rtpengine/rtp/api"

// Stats are a region's counters and gauges as GET
// /v1/regions/{region}/stats reports them: package api's Stats, the
// documented wire shape. Keys a newer server adds are not decoded;
// StatsRaw returns the answer as the server wrote it.
type Stats = api.Stats

// The parts of Stats, under their names in this package.
type (
	// SinkFill is a queue's or sink's fill and capacity.
	SinkFill = api.SinkFill
	// SinkStats describe one hot sink.
	SinkStats = api.SinkStats
	// PipelineStats are the location pipeline's queues, sinks and
	// counters.
	PipelineStats = api.PipelineStats
	// MemoryStats summarize the region's spatial memory.
	MemoryStats = api.MemoryStats
	// ResidentStats are the counters of the resident chunk store of the
	// region's world.
	ResidentStats = api.Resident
	// UniqueStats count the work of unique placement.
	UniqueStats = api.UniqueStats
	// UnknownBlocksStats count the block names the collision data does
	// not know (never landed on).
	UnknownBlocksStats = api.UnknownBlocksStats
	// WatchStats count what a Minecraft world's watcher saw, and what its
	// region-file reader counted; Period gives PeriodMs as a duration.
	WatchStats = api.WatchStats
	// Latency summarizes the durations of the teleports a region served,
	// in float milliseconds; its methods P50, P90, P99 and Max give them
	// as durations.
	Latency = api.Latency
)
