package gpuarray

import (
	"context"
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Sorts and transforms across chunks held on several GPUs (issue 32, items 2 and 4). A call
// whose axis spans chunks that Persist dealt to several GPUs reads one block joined from them
// (plan.HeldJoin). With peer copies on (peerCopy), the block is planned as a join on the GPU
// holding most of its elements, and before the task runs the chunks held on the other GPUs are
// copied there peer to peer (gatherJoin; Path names the copies between GPUs), so the call reads
// the whole block on one device and its output stays there. With peer copies off, such a block
// is read from the array's host copy, which Path names as a host read.

// crossJoinedBlock returns the block of exactly the box [lo, hi] of the array joined from the
// chunks it meets when they are held on several of devs: Held.Device is the GPU holding most of
// the box's chunks' elements (on a tie the first chunk's), the pieces are the chunks at their
// own GPUs' addresses, and splitByDevice copies the other GPUs' pieces before the task runs.
func (g *gpuChunks) crossJoinedBlock(devs []*cuda.Device, lo, hi []int) (plan.Block, bool) {
	chunks, ok := g.grid.meeting(lo, hi)
	if !ok || len(chunks) < 2 {
		return plan.Block{}, false
	}
	join := &plan.HeldJoin{}
	elems := map[*cuda.Device]int64{}
	for _, i := range chunks {
		p := g.ptr(i)
		if p == 0 || !slices.Contains(devs, g.devs[i]) {
			return plan.Block{}, false
		}
		shape := g.chunkShape(i)
		n := int64(1)
		for _, s := range shape {
			n *= int64(s)
		}
		elems[g.devs[i]] += n
		join.Pieces = append(join.Pieces, plan.HeldPiece{Ptr: uintptr(p), Origin: slices.Clone(g.offs[i]), Shape: shape})
	}
	if len(elems) < 2 {
		return plan.Block{}, false // one GPU holds them all: joinedBlock's case
	}
	dev := g.devs[chunks[0]]
	for _, i := range chunks {
		if elems[g.devs[i]] > elems[dev] {
			dev = g.devs[i]
		}
	}
	shape := make([]int, len(lo))
	for d := range lo {
		shape[d] = hi[d] - lo[d] + 1
	}
	return plan.Block{Origin: slices.Clone(lo), Shape: shape,
		Held: &plan.Held{Device: dev.Info.Index, Ptr: join.Pieces[0].Ptr, Narrow: g.narrow, Join: join}}, true
}

// crossJoins reports whether the calls of kernel k may read blocks joined from chunks held on
// several GPUs (crossJoinedBlock): with peer copies on, for library calls that read their
// fused values on the device, whose tasks splitByDevice places.
func crossJoins(k *plan.Kernel, devs int) bool {
	return peerCopy && devs > 1 && k != nil && k.Call != nil && readsHeldInPlace(k)
}

// joinChunks returns the chunks of src's array that joined block b reads, in its pieces' order,
// and false when b is not such a block.
func joinChunks(src heldSource, b *plan.Block) ([]int, bool) {
	if src.i >= 0 || src.box == nil || b.Held == nil || b.Held.Join == nil {
		return nil, false
	}
	chunks, ok := src.g.grid.meeting(src.box.Origin, lastIndex(src.box.Origin, src.box.Shape))
	if !ok || len(chunks) != len(b.Held.Join.Pieces) {
		return nil, false
	}
	return chunks, true
}

// joinsAcross reports whether held block b is joined from chunks some of which another GPU than
// b.Held.Device holds.
func (s *gpuSched) joinsAcross(b *plan.Block) bool {
	if b.Held == nil || b.Held.Join == nil {
		return false
	}
	s.mu.Lock()
	src, ok := s.sources[*b.Held]
	s.mu.Unlock()
	if !ok {
		return false
	}
	chunks, ok := joinChunks(src, b)
	if !ok {
		return false
	}
	for _, i := range chunks {
		if src.g.devs[i].Info.Index != b.Held.Device {
			return true
		}
	}
	return false
}

// gatherJoin returns joined block b (source src) as GPU dev reads it: the pieces other GPUs
// hold copied to dev peer to peer (once per run, in c.ptrs), the others where they are. ok is
// false when a copy found no room (the caller reads the task's blocks from the host).
func (c *peerCopies) gatherJoin(ctx context.Context, b *plan.Block, src heldSource, dev int) (plan.Held, bool, error) {
	chunks, ok := joinChunks(src, b)
	if !ok {
		return plan.Held{}, false, nil
	}
	target := c.s.device(dev)
	if target == nil {
		return plan.Held{}, false, fmt.Errorf("gpuarray: no gpu %d for a joined block (internal)", dev)
	}
	join := &plan.HeldJoin{Pieces: slices.Clone(b.Held.Join.Pieces)}
	for j, i := range chunks {
		from := src.g.devs[i]
		if from.Info.Index == dev {
			continue
		}
		base := src.g.ptr(i)
		if base == 0 || uintptr(base) != join.Pieces[j].Ptr {
			return plan.Held{}, false, fmt.Errorf("gpuarray: a persisted chunk read on gpu %d was released (internal)", dev)
		}
		key := peerKey{heldSource{g: src.g, i: i}, dev}
		p, ok := c.ptrs[key]
		if !ok {
			n := uint64(src.g.chunkWords(i)) * 8
			var err error
			if p, err = target.CopyFromPeer(ctx, from, base, n); err != nil {
				if ctx.Err() != nil {
					return plan.Held{}, false, ctx.Err()
				}
				c.hostE = err
				return plan.Held{}, false, nil
			}
			c.ptrs[key] = p
			c.bytes += n
		}
		join.Pieces[j].Ptr = uintptr(p)
	}
	return plan.Held{Device: dev, Ptr: join.Pieces[0].Ptr, Narrow: b.Held.Narrow, Join: join}, true, nil
}
