package procgen

import (
	"context"
	"math"
)

// Drainage geometry. A drainage cell owns a world-aligned square of
// cellSize blocks; its flow is computed on a node grid (one node every
// nodeSpacing blocks, world-aligned) that extends apronNodes beyond the cell
// on every side, so a river entering from a neighbouring cell already
// carries the water of the apron upstream of it. Samples within blendHalf
// blocks of a cell edge blend the two (or four) cells' fields.
const (
	cellSize    = 1024
	nodeSpacing = 8
	cellNodes   = cellSize / nodeSpacing
	apronNodes  = 48
	gridNodes   = cellNodes + 2*apronNodes + 1
	blendHalf   = 64.0

	// keep is the margin of nodes kept around the cell after computing:
	// enough for bilinear lookups across the blend band.
	keep      = int(blendHalf)/nodeSpacing + 2
	keptNodes = cellNodes + 2*keep + 1

	riverThreshold = 300.0 // rain-weighted upstream nodes that make a river
	lakeNodeDepth  = 0.1   // a filled node this deep belongs to a depression
	lakeMinDepth   = 8.0   // a depression this deep somewhere is a lake
	lakeMinNodes   = 6
)

// Node kinds.
const (
	nodeDry uint8 = iota
	nodeRiver
	nodeLake
)

// cell holds one drainage cell's fields over keptNodes x keptNodes nodes.
// It is immutable once computed and shared by all readers.
type cell struct {
	n0x, n0z int64     // global node index of the kept grid's first node
	carve    []float32 // how far the ground is lowered (river channels)
	water    []float32 // water surface; below the carved ground where dry
	kind     []uint8   // nodeDry, nodeRiver or nodeLake
}

// fields are the drainage values at one position.
type fields struct {
	carve, water, river, lake float64
}

// lookup interpolates the cell's fields bilinearly at (x, z), which must
// lie within the blend band of the cell.
func (c *cell) lookup(x, z float64) fields {
	gx := float64(x/nodeSpacing) - float64(c.n0x)
	gz := float64(z/nodeSpacing) - float64(c.n0z)
	fx, fz := math.Floor(gx), math.Floor(gz)
	i, j := int(fx), int(fz)
	tx, tz := gx-fx, gz-fz
	i = min(max(i, 0), keptNodes-2)
	j = min(max(j, 0), keptNodes-2)
	k00 := j*keptNodes + i
	k01 := k00 + keptNodes
	bil := func(a []float32) float64 {
		return lerp(lerp(float64(a[k00]), float64(a[k00+1]), tx), lerp(float64(a[k01]), float64(a[k01+1]), tx), tz)
	}
	is := func(k int, want uint8) float64 {
		if c.kind[k] == want {
			return 1
		}
		return 0
	}
	kindW := func(want uint8) float64 {
		return lerp(lerp(is(k00, want), is(k00+1, want), tx), lerp(is(k01, want), is(k01+1, want), tx), tz)
	}
	return fields{carve: bil(c.carve), water: bil(c.water), river: kindW(nodeRiver), lake: kindW(nodeLake)}
}

// floodItem is one node in the priority-flood queue. Ties in level break by
// insertion order, so the traversal (and everything downstream of it) is
// deterministic.
type floodItem struct {
	level float64
	seq   uint32
	idx   int32
}

// floodQueue is a binary min-heap of floodItems, written out rather than
// driven through container/heap to avoid boxing every push.
type floodQueue []floodItem

func (a floodItem) less(b floodItem) bool {
	if a.level != b.level {
		return a.level < b.level
	}
	return a.seq < b.seq
}

func (q *floodQueue) push(it floodItem) {
	h := append(*q, it)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	*q = h
}

func (q *floodQueue) pop() floodItem {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

var neighbours = [8][2]int{{-1, -1}, {0, -1}, {1, -1}, {-1, 0}, {1, 0}, {-1, 1}, {0, 1}, {1, 1}}

// computeCell runs the drainage pass for cell (cx, cz). It checks ctx
// between rows and every few thousand flood steps.
func computeCell(ctx context.Context, f *field, cx, cz int64) (*cell, error) {
	const n = gridNodes
	g0x := cx*cellNodes - apronNodes
	g0z := cz*cellNodes - apronNodes
	ground := make([]float64, n*n)
	rain := make([]float64, n*n)
	for j := range n {
		if j%8 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		z := float64((g0z + int64(j)) * nodeSpacing)
		for i := range n {
			x := float64((g0x + int64(i)) * nodeSpacing)
			h := f.height(x, z)
			ground[j*n+i] = h
			rain[j*n+i] = rainfall(f.moisture(x, z))
		}
	}

	// Priority flood (Barnes et al. 2014): grow inwards from the grid edge
	// and the sea, lowest first. A node's level is the lowest water surface
	// from which it can drain out; its receiver is the node that reached it.
	level := make([]float64, n*n)
	recv := make([]int32, n*n)
	seen := make([]bool, n*n)
	order := make([]int32, 0, n*n)
	q := make(floodQueue, 0, 4*n)
	var seq uint32
	push := func(idx int, lvl float64, from int32) {
		seen[idx] = true
		level[idx] = lvl
		recv[idx] = from
		q.push(floodItem{level: lvl, seq: seq, idx: int32(idx)})
		seq++
	}
	for j := range n {
		for i := range n {
			k := j*n + i
			switch {
			case ground[k] < f.sea:
				push(k, f.sea, -1)
			case i == 0 || j == 0 || i == n-1 || j == n-1:
				push(k, ground[k], -1)
			}
		}
	}
	for len(q) > 0 {
		if len(order)%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		it := q.pop()
		c := int(it.idx)
		order = append(order, it.idx)
		ci, cj := c%n, c/n
		for _, d := range neighbours {
			i, j := ci+d[0], cj+d[1]
			if i < 0 || j < 0 || i >= n || j >= n {
				continue
			}
			k := j*n + i
			if seen[k] {
				continue
			}
			push(k, max(ground[k], level[c]), int32(c))
		}
	}

	// Flow accumulation: every node passes its water to its receiver, in
	// reverse flood order (receivers were reached before their donors).
	acc := rain
	for k := len(order) - 1; k >= 0; k-- {
		c := order[k]
		if r := recv[c]; r >= 0 {
			acc[r] += acc[c]
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	kind := make([]uint8, n*n)
	carve := make([]float64, n*n)
	water := make([]float64, n*n)
	markLakes(ground, level, kind, f.sea)
	for k := range water {
		water[k] = math.Inf(-1)
		if kind[k] == nodeLake {
			water[k] = level[k]
		}
	}

	// Rivers: carve a channel under every node that drains enough water,
	// widened for big rivers, with its surface a little below the banks.
	for k := range n * n {
		if kind[k] == nodeLake || ground[k] < f.sea || acc[k] < riverThreshold {
			continue
		}
		s := acc[k] / riverThreshold
		depth := min(1.5+float64(1.1*math.Sqrt(s)), 9)
		surface := level[k] - float64(0.35*depth)
		radius := 0
		if s >= 40 {
			radius = 2
		} else if s >= 6 {
			radius = 1
		}
		ci, cj := k%n, k/n
		for dj := -radius; dj <= radius; dj++ {
			for di := -radius; di <= radius; di++ {
				i, j := ci+di, cj+dj
				if i < 0 || j < 0 || i >= n || j >= n {
					continue
				}
				nk := j*n + i
				if kind[nk] == nodeLake || ground[nk] < f.sea {
					continue
				}
				dist := math.Sqrt(float64(di*di + dj*dj))
				if dist > float64(radius)+0.5 {
					continue
				}
				fall := 1 - dist/float64(radius+1)
				carve[nk] = max(carve[nk], float64(depth*fall))
				water[nk] = max(water[nk], surface)
			}
		}
		// A diagonal step would leave the channel pinched between the two
		// dry corner nodes; give them a half-depth channel as well.
		if r := int(recv[k]); r >= 0 && r%n != ci && r/n != cj {
			for _, nk := range [2]int{cj*n + r%n, (r/n)*n + ci} {
				if kind[nk] == nodeLake || ground[nk] < f.sea {
					continue
				}
				carve[nk] = max(carve[nk], float64(depth*0.5))
				water[nk] = max(water[nk], surface)
			}
		}
	}
	for k := range n * n {
		switch {
		case kind[k] == nodeLake:
		case water[k] > ground[k]-carve[k]:
			kind[k] = nodeRiver
		case water[k] == math.Inf(-1):
			// Untouched dry ground: a surface safely below it.
			water[k] = ground[k] - carve[k] - 2
		}
		// A bank beside a channel keeps the channel's surface (below its
		// ground), so interpolation between them stays wet up to the bank.
	}

	// Keep only the nodes lookups can reach.
	out := &cell{
		n0x:   g0x + apronNodes - int64(keep),
		n0z:   g0z + apronNodes - int64(keep),
		carve: make([]float32, keptNodes*keptNodes),
		water: make([]float32, keptNodes*keptNodes),
		kind:  make([]uint8, keptNodes*keptNodes),
	}
	off := apronNodes - keep
	for j := range keptNodes {
		for i := range keptNodes {
			src := (j+off)*n + i + off
			dst := j*keptNodes + i
			out.carve[dst] = float32(carve[src])
			out.water[dst] = float32(water[src])
			out.kind[dst] = kind[src]
		}
	}
	return out, nil
}

// markLakes labels as nodeLake every filled depression (connected nodes
// above sea level whose flood level exceeds the ground) that is at least
// lakeMinDepth deep somewhere and lakeMinNodes large.
func markLakes(ground, level []float64, kind []uint8, sea float64) {
	n := gridNodes
	wet := func(k int) bool { return ground[k] >= sea && level[k]-ground[k] >= lakeNodeDepth }
	label := make([]bool, len(ground))
	var comp, stack []int
	for start := range ground {
		if label[start] || !wet(start) {
			continue
		}
		comp, stack = comp[:0], append(stack[:0], start)
		label[start] = true
		deepest := 0.0
		for len(stack) > 0 {
			k := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			comp = append(comp, k)
			deepest = max(deepest, level[k]-ground[k])
			ci, cj := k%n, k/n
			for _, d := range neighbours {
				i, j := ci+d[0], cj+d[1]
				if i < 0 || j < 0 || i >= n || j >= n {
					continue
				}
				nk := j*n + i
				if !label[nk] && wet(nk) && level[nk] == level[k] {
					label[nk] = true
					stack = append(stack, nk)
				}
			}
		}
		if deepest >= lakeMinDepth && len(comp) >= lakeMinNodes {
			for _, k := range comp {
				kind[k] = nodeLake
			}
		}
	}
}
