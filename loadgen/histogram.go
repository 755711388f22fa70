package loadgen

import "github.com/rtpengine/rtp/internal/hist"

// Histogram records durations: the module's one latency histogram (see
// internal/hist), the same the engine keeps for each region. A reported
// quantile is at most 1/128 (0.8%) above a recorded value, over the whole
// range of time.Duration, in a fixed 57 KiB; Min, Max, Count and Sum are
// exact. Each worker records into its own, merged into the Result at the
// end, so workers never touch a shared line on the hot path.
//
// The zero value is an empty histogram ready to use. A Histogram is safe
// for concurrent use and must not be copied after first use.
type Histogram = hist.Histogram
