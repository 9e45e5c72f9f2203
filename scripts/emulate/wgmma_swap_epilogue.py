# Emulates the swapped epilogues of 15_wgmma.cu (branch wgmma-swap-ab) on the CPU: store_staged_t (boxes,
# 128-byte swizzle, TMA store with clipping) and store_direct_t, given the wgmma accumulator layout that the
# non-swapped epilogue already relies on (verified on the H100). Checks every C element of a tile is written once
# with the right value, and that the staged writes are bank-conflict-free. Run: python3 this file.
import itertools
BN, BM, SB, CBC = 256, 128, 2, 32
def acc_layout(tid):  # wgmma m64nN f32 accumulator: d[4j+2h+c] = D(16w + l/4 + 8h, 8j + 2(l%4) + c)
    w, l = tid // 32, tid % 32
    return {4*j+2*h+c: (16*w + l//4 + 8*h, 8*j + 2*(l%4) + c) for j in range(BN//8) for h in range(2) for c in range(2)}
def run(M, N, tm, tn, wg, staged):
    n0, m0 = tm*BM + wg*64, tn*BN
    C = {}
    val = lambda r, cc: ('C', m0 + cc, n0 + r)   # D(r, cc) = C^T(n0 + r, m0 + cc)
    regs = {t: {i: val(*rc) for i, rc in acc_layout(t).items()} for t in range(128)}
    if not staged:
        for t in range(128):
            warp, lane = t//32, t%32
            n = n0 + warp*16 + lane//4; q = t % 4
            for j in range(BN//8):
                for h in range(2):
                    for c in range(2):
                        row, col = m0 + 8*j + 2*q + c, n + 8*h
                        if row < M and col < N: C[(row, col)] = regs[t][4*j+2*h+c]
        return C
    for rnd in range(BN//64//(SB//2)):
        boxes = [dict() for _ in range(SB)]
        for t in range(128):
            warp, lane, q = t//32, t%32, t%32 % 4
            for b in range(SB):
                nb, mb = b % 2, rnd*(SB//2) + b//2
                if warp//2 != nb: continue
                for jj in range(8):
                    for h in range(2):
                        for c in range(2):
                            row, col = 8*jj + 2*q + c, (warp % 2)*16 + lane//4 + 8*h
                            off = row*128 + (((col//4) ^ (row % 8))*16) + (col % 4)*4
                            assert off not in boxes[b], "double write"
                            boxes[b][off] = regs[t][4*(8*mb + jj) + 2*h + c]
        for b in range(SB):
            assert len(boxes[b]) == 64*32, len(boxes[b])
            c0, c1 = n0 + (b % 2)*CBC, m0 + (rnd*(SB//2) + b//2)*64
            for r in range(64):      # TMA store: box row r, element e (un-swizzled), clipped to M x N
                for e in range(32):
                    off = r*128 + (((e//4) ^ (r % 8))*16) + (e % 4)*4
                    if c1 + r < M and c0 + e < N: C[(c1 + r, c0 + e)] = boxes[b][off]
    return C
for M, N, staged in [(700, 300, True), (700, 300, False), (513, 129, False), (256, 128, True)]:
    for tm, tn, wg in itertools.product(range(-(-N//BM)), range(-(-M//BN)), range(2)):
        C = run(M, N, tm, tn, wg, staged)
        for (m, n), v in C.items():
            assert v == ('C', m, n), (m, n, v)
        # coverage: every in-bounds element of this WG's part of the tile
        exp = {(m, n) for m in range(tn*BN, min(M, tn*BN + BN)) for n in range(tm*BM + wg*64, min(N, tm*BM + wg*64 + 64))}
        assert set(C) == exp, (M, N, tm, tn, wg, len(C), len(exp))
    print("ok", M, N, "staged" if staged else "direct")
# bank conflicts of one warp instruction of store_staged_t: 32 lanes, 4-byte writes
for warp in range(4):
    for jj, h, c in itertools.product(range(8), range(2), range(2)):
        banks = set()
        for lane in range(32):
            q = lane % 4
            row, col = 8*jj + 2*q + c, (warp % 2)*16 + lane//4 + 8*h
            off = row*128 + (((col//4) ^ (row % 8))*16) + (col % 4)*4
            banks.add((off//4) % 32)
        assert len(banks) == 32, (warp, jj, h, c, len(banks))
print("conflict-free")
