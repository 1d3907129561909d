package sim

import "fmt"

// Check verifies the books' accounting by a full scan: used bytes equal
// resident plus loading bytes and fit the capacity, loading bytes equal the
// Loading keys' bytes. It costs O(keys); the simulator runs it after every
// pass when built with -tags invariants, the live driver after a run.
func (b *Books) Check() error {
	var resident, loading int64
	for k := range b.keys {
		switch b.keys[k].state {
		case Resident:
			resident += b.layerBytes[k/b.nE]
		case Loading:
			loading += b.layerBytes[k/b.nE]
		}
	}
	switch {
	case b.used != resident+loading:
		return fmt.Errorf("books: used %d bytes, but resident %d + loading %d", b.used, resident, loading)
	case b.loadingBytes != loading:
		return fmt.Errorf("books: loading %d bytes counted, %d in Loading keys", b.loadingBytes, loading)
	case b.used > b.capacity+b.c.OverBudgetBytes:
		// NB: only a batch larger than the cache may go over, by at most the
		// recorded over-budget peak (Books.overBudget).
		return fmt.Errorf("books: used %d bytes over capacity %d (+%d admitted over budget)", b.used, b.capacity, b.c.OverBudgetBytes)
	}
	return nil
}

// CheckComputed verifies that every key of the current union is Resident
// (after the layer's experts computed).
func (b *Books) CheckComputed() error {
	for _, k := range b.union {
		if st := b.keys[k].state; st != Resident {
			l, x := k.Split(b.nE)
			return fmt.Errorf("books: layer %d expert %d computed while %s", l, x, residencyName(st))
		}
	}
	return nil
}

// residencyName names a residency state for messages.
func residencyName(r Residency) string {
	switch r {
	case Absent:
		return "absent"
	case Loading:
		return "loading"
	case Resident:
		return "resident"
	}
	return fmt.Sprintf("Residency(%d)", uint8(r))
}

// checkLayer panics when a computed layer left an in-use key not resident
// (invariants builds only).
func (e *engine) checkLayer() {
	if err := e.bk.CheckComputed(); err != nil {
		panic(err)
	}
}

// checkPass panics when the books' accounting is off or a key is both
// absent and has reads pending (invariants builds only).
func (e *engine) checkPass() {
	if err := e.bk.Check(); err != nil {
		panic(err)
	}
	for k := range e.bk.keys {
		if ks := &e.bk.keys[k]; ks.state == Absent && (ks.pending != 0 || ks.syncLoad) {
			l, x := Key(k).Split(e.nE)
			panic(fmt.Sprintf("books: layer %d expert %d absent with %d reads pending (sync %v)", l, x, ks.pending, ks.syncLoad))
		}
	}
}
