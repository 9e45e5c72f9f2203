# Replays the main loop of 13_multistage.cu's COPY_PARTS / FRAG_PREFETCH variants
# (multistage_variant_loop) for one thread, in program order, and checks the pipeline's
# synchronisation as every thread of the block runs the same program between barriers:
#   - every fragment load reads a stage buffer whose copies of the wanted slice were all issued,
#     waited for (cp.async.wait_group) and then published by a barrier, and that no thread is
#     overwriting in the same barrier interval (a copy into a buffer issued in the interval of a
#     read of it is a race, whatever the program order, since other warps run ahead or behind);
#   - every k-step's FMAs use the fragments of that slice and k-step (the register double
#     buffer of FRAG_PREFETCH);
#   - every part of every slice's copy is issued exactly once.
# No GPU: this checks the ordering the kernel source encodes, not the hardware. Run: python3 this file.
import itertools


def replay(slices, stages, bk, parts, prefetch):
    parts = max(1, min(parts, bk // 2))
    epoch = 0
    issues = []  # (epoch, buffer, slice, part, group)
    reads = []  # (epoch, buffer, slice, k)
    committed = 0  # groups committed so far
    done_at_barrier = {}  # epoch -> groups complete when it began
    waited = 0  # groups this thread has waited for
    pending = []  # parts issued since the last commit: (epoch, buffer, slice, part)
    regs = [None, None]
    used = []

    def issue(t, buf, p):
        pending.append((epoch, buf, t, p))

    def commit():
        nonlocal committed
        for e, b, s, p in pending:
            issues.append((e, b, s, p, committed))
        pending.clear()
        committed += 1

    def wait(n):
        nonlocal waited
        waited = max(waited, committed - n)

    def barrier():
        nonlocal epoch
        epoch += 1
        done_at_barrier[epoch] = waited

    def load(slot, buf, t, k):
        reads.append((epoch, buf, t, k))
        regs[slot] = (t, k)

    nxt = lambda b: 0 if b + 1 == stages else b + 1
    for t in range(stages - 1):
        for p in range(parts):
            issue(t, t, p)
        commit()
    read, write = 0, stages - 1
    if prefetch:
        wait(stages - 2)
        barrier()
        load(0, 0, 0, 0)
    for t in range(slices):
        if not prefetch:
            wait(stages - 2)
            barrier()
        for p in range(parts):
            k0 = p * bk // parts
            if not prefetch and p == 0:
                load(0, read, t, 0)
            issue(t + stages - 1, write, p)
            if p == parts - 1:
                commit()
            for kk in range(k0, (p + 1) * bk // parts):
                if not prefetch and kk == 0:
                    pass
                elif not prefetch:
                    load(kk % 2, read, t, kk)
                elif kk + 1 < bk:
                    load((kk + 1) % 2, read, t, kk + 1)
                else:
                    wait(stages - 2)
                    barrier()
                    load(0, nxt(read), t + 1, 0)
                assert regs[kk % 2] == (t, kk), (t, kk, regs)
                used.append((t, kk))
        read, write = nxt(read), nxt(write)
    assert not pending
    assert used == [(t, k) for t in range(slices) for k in range(bk)]
    # each slice's parts issued exactly once
    got = sorted((s, p) for _, _, s, p, _ in issues)
    assert got == sorted(set(got)), "a part issued twice"
    for s in range(slices):
        assert all((s, p) in got for p in range(parts)), (s, "missing parts")
    for e, b, s, k in reads:
        if s >= slices:
            continue  # FRAG_PREFETCH's load past the last slice: zeros, never used
        mine = [i for i in issues if i[1] == b and i[2] == s]
        assert len(mine) == parts, (e, b, s, k, mine)
        for ie, _, _, _, g in mine:
            assert ie < e, f"slice {s} read in the interval its copy was issued ({e})"
            assert done_at_barrier[e] > g, f"slice {s} read at epoch {e} before its group {g} was waited for"
        # no copy of another slice into b between that slice's copy and this read, or during it
        later = [i for i in issues if i[1] == b and i[2] != s and mine[0][0] <= i[0] <= e]
        assert not later, (e, b, s, later)
    return len(reads)


n = 0
for slices, stages, bk, parts, prefetch in itertools.product(
    [1, 2, 3, 4, 7], [2, 3, 4], [8, 16, 32], [1, 2, 3, 4, 8, 32], [False, True]
):
    replay(slices, stages, bk, parts, prefetch)
    n += 1
print(f"ok: {n} configurations (slices 1-7, STAGES 2-4, BK 8-32, COPY_PARTS 1-32, FRAG_PREFETCH 0/1)")
