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

# --- C in bf16/f16 (C_NARROW): boxes of 64 rows x 64 two-byte columns (128-byte rows), the box covering all 64 of
# the warpgroup's columns; each lane packs its two rows (r low, r+1 high) into a word, trades words with lane ^ 4,
# and keeps the low halves (even g: row r) or the high halves (odd g: row r+1). Values are tracked symbolically.
def byte_perm(x, y, sel):  # x, y: 4-tuples of bytes (lsb first); result byte i = {x, y}[nibble i of sel]
    src = x + y
    return tuple(src[(sel >> (4*i)) & 0xF] for i in range(4))
def pack(lo, hi):  # a bf16x2 word: bytes 0-1 = lo, 2-3 = hi
    return (('lo', lo), ('hi', lo), ('lo', hi), ('hi', hi))
def run_narrow(M, N, tm, tn, wg):
    n0, m0 = tm*BM + wg*64, tn*BN
    val = lambda r, cc: ('C', m0 + cc, n0 + r)
    regs = {t: {i: val(*rc) for i, rc in acc_layout(t).items()} for t in range(128)}
    C = {}
    for rnd in range(BN//64//SB):
        boxes = [dict() for _ in range(SB)]
        for b in range(SB):
            mb = rnd*SB + b
            for warp in range(4):
                for jj, h in itertools.product(range(8), range(2)):
                    i = 4*(8*mb + jj) + 2*h
                    mine = {l: pack(regs[warp*32 + l][i], regs[warp*32 + l][i + 1]) for l in range(32)}
                    banks = set()
                    for l in range(32):
                        g, q = l // 4, l % 4
                        odd = g & 1
                        pair = byte_perm(mine[l], mine[l ^ 4], 0x3276 if odd else 0x5410)
                        row, col = 8*jj + 2*q + odd, warp*16 + 8*h + (g & ~1)
                        byte = col*2
                        off = row*128 + (((byte//16) ^ (row % 8))*16) + byte % 16
                        banks.add((off//4) % 32)
                        for k in range(2):  # element k of the pair: bytes 2k (lo), 2k+1 (hi) of one value
                            assert pair[2*k][0] == 'lo' and pair[2*k+1][0] == 'hi' and pair[2*k][1] == pair[2*k+1][1]
                            assert off + 2*k not in boxes[b], "double write"
                            boxes[b][off + 2*k] = pair[2*k][1]
                    assert len(banks) == 32, "bank conflict"
        for b in range(SB):
            assert len(boxes[b]) == 64*64
            c0, c1 = n0, m0 + (rnd*SB + b)*64
            for r in range(64):
                for e in range(64):
                    byte = e*2
                    off = r*128 + (((byte//16) ^ (r % 8))*16) + byte % 16
                    if c1 + r < M and c0 + e < N: C[(c1 + r, c0 + e)] = boxes[b][off]
    return C
for M, N in [(700, 304), (256, 128), (520, 136)]:
    for tm, tn, wg in itertools.product(range(-(-N//BM)), range(-(-M//BN)), range(2)):
        C = run_narrow(M, N, tm, tn, wg)
        for (m, n), v in C.items():
            assert v == ('C', m, n), (m, n, v)
        exp = {(m, n) for m in range(tn*BN, min(M, tn*BN + BN)) for n in range(tm*BM + wg*64, min(N, tm*BM + wg*64 + 64))}
        assert set(C) == exp, (M, N, tm, tn, wg, len(C), len(exp))
    print("ok", M, N, "staged 16-bit C, conflict-free")
