package webmap

import "sync"

// FeedSize is the number of recent deliveries a Feed keeps.
const FeedSize = 256

// feedBuffer is the channel buffer of each subscription.
const feedBuffer = 64

// Feed is a region's delivery feed for Backend implementations: a ring of
// the last FeedSize deliveries and a set of subscribers. Publish never
// blocks: a subscriber whose buffer is full misses the delivery (its
// Dropped count grows).
//
// The zero value is an empty, usable Feed; it must not be copied after
// first use. A Feed is safe for concurrent use.
type Feed struct {
	mu sync.Mutex
	// mu protects the following fields.
	ring    [FeedSize]Delivery
	n       int // deliveries ever published, capped uses n % FeedSize
	subs    map[chan Delivery]struct{}
	dropped uint64
}

// Publish records d and sends it to every subscriber that has room.
func (f *Feed) Publish(d Delivery) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ring[f.n%FeedSize] = d
	f.n++
	for ch := range f.subs {
		select {
		case ch <- d:
		default:
			f.dropped++
		}
	}
}

// Recent returns the latest deliveries, oldest first.
func (f *Feed) Recent() []Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := min(f.n, FeedSize)
	out := make([]Delivery, 0, k)
	for i := f.n - k; i < f.n; i++ {
		out = append(out, f.ring[i%FeedSize])
	}
	return out
}

// Subscribe returns a channel of the deliveries published from now on and
// the function that ends the subscription (closing the channel); calling
// it twice is harmless.
func (f *Feed) Subscribe() (<-chan Delivery, func()) {
	ch := make(chan Delivery, feedBuffer)
	f.mu.Lock()
	if f.subs == nil {
		f.subs = map[chan Delivery]struct{}{}
	}
	f.subs[ch] = struct{}{}
	f.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.subs, ch)
			f.mu.Unlock()
			close(ch)
		})
	}
}

// Dropped returns how many deliveries subscribers missed because their
// buffer was full.
func (f *Feed) Dropped() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dropped
}
