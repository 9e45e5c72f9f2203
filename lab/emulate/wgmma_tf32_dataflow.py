# Emulates 16_wgmma_tf32.cu's data flow (TMA boxes with the 128B swizzle, fragment loads by the
# kernel's own offset formulas, descriptor reads of S, the epilogue) on the CPU, assuming the PTX
# fragment layout a0=(g,t) a1=(g+8,t) a2=(g,t+4) a3=(g+8,t+4) per warp and the K-major SW128
# descriptor addressing of 15_wgmma.cu. Exact (no tf32 rounding): checks index math only.
import numpy as np, itertools, sys
BM, BN, BK = 128, 256, 32
R_STAGE = BM*BK*4
def swz(o): return o ^ (((o >> 7) & 7) << 4)

def run(M, N, K, op_a, op_b, rng):
    A = rng.integers(-4, 5, size=(M, K) if op_a == 'N' else (K, M)).astype(np.float64)
    B = rng.integers(-4, 5, size=(K, N) if op_b == 'N' else (N, K)).astype(np.float64)
    opA = A if op_a == 'N' else A.T
    opB = B if op_b == 'N' else B.T
    want = opA @ opB
    a_rs, a_cs = (K, 1) if op_a == 'N' else (1, M)
    b_rs, b_cs = (N, 1) if op_b == 'N' else (1, K)
    a_kmajor = a_cs == 1; b_kmajor = b_rs == 1
    if not a_kmajor and not b_kmajor: return None
    swapped = not b_kmajor
    P, Q = (N, M) if swapped else (M, N)
    tiles_p, tiles_q = -(-P // BM), -(-Q // BN)
    kblocks = -(-K // BK)
    if swapped: map_r, map_s, r_pmajor = B, A, True
    elif a_kmajor: map_r, map_s, r_pmajor = A, B, False
    else: map_r, map_s, r_pmajor = A, B, True
    C = np.full((M, N), np.nan)
    def tma(smem, dst, T, c0, c1, rows):  # box of 32 (inner) x rows at (c0 inner, c1 outer)
        for i in range(rows):
            for j in range(32):
                r, c = c1 + i, c0 + j
                v = T[r, c] if (0 <= r < T.shape[0] and 0 <= c < T.shape[1]) else 0.0
                smem[(dst + swz(i*128 + j*4)) // 4] = v
    for tp, tq in itertools.product(range(tiles_p), range(tiles_q)):
        D = np.zeros((BM, BN))
        for kb in range(kblocks):
            smem = np.full((R_STAGE + BN*BK*4)//4, np.nan)
            if r_pmajor:
                for j in range(BM // 32): tma(smem, j*4096, map_r, tp*BM + j*32, kb*BK, BK)
            else:
                tma(smem, 0, map_r, kb*BK, tp*BM, BM)
            tma(smem, R_STAGE, map_s, kb*BK, tq*BN, BN)
            for wg in range(2):
                for kk in range(BK // 8):
                    Afrag = np.full((64, 8), np.nan)
                    for warp in range(4):
                        p0 = wg*64 + warp*16
                        regs = np.zeros((32, 4))
                        if r_pmajor:
                            for lane in range(32):
                                g, t = lane // 4, lane % 4
                                off = []
                                for h in range(2):
                                    for s in range(2):
                                        p = p0 + g + 8*h
                                        k = t + 4*((t & 1) ^ s)
                                        off.append((p//32)*4096 + k*128 + ((((p % 32)//4) ^ k) << 4) + (p % 4)*4)
                                odd = lane & 1
                                for h in range(2):
                                    x0 = smem[(off[2*h] + kk*1024)//4]; x1 = smem[(off[2*h+1] + kk*1024)//4]
                                    regs[lane, h] = x1 if odd else x0
                                    regs[lane, h+2] = x0 if odd else x1
                        else:
                            addr = []
                            for lane in range(32):
                                row = p0 + lane % 8 + 8*((lane//8) & 1)
                                chunk = (lane//16) ^ (lane % 8)
                                addr.append(row*128 + ((chunk ^ (2*kk)) << 4))
                            for mi in range(4):
                                for lane in range(32):
                                    g, t = lane // 4, lane % 4
                                    regs[lane, mi] = smem[(addr[mi*8 + g] + 4*t)//4]
                        for lane in range(32):
                            g, t = lane // 4, lane % 4
                            r = warp*16 + g
                            Afrag[r, t], Afrag[r+8, t], Afrag[r, t+4], Afrag[r+8, t+4] = regs[lane]
                    # S via descriptor: start = R_STAGE + kk*32, SBO 1024, K-major SW128
                    Sfrag = np.zeros((8, BN))
                    for q in range(BN):
                        for k in range(8):
                            a = R_STAGE + kk*32 + (q//8)*1024 + (q % 8)*128 + k*4
                            Sfrag[k, q] = smem[swz(a)//4]
                    D[wg*64:(wg+1)*64] += Afrag @ Sfrag
        # epilogue: d[4j+2h+c] = D(p0+g+8h, 8j+2t+c)
        for wg, warp, lane in itertools.product(range(2), range(4), range(32)):
            p0 = wg*64 + warp*16
            p = tp*BM + p0 + lane//4; q = tq*BN + (lane % 4)*2
            for j, h, c in itertools.product(range(BN//8), range(2), range(2)):
                val = D[p0 + lane//4 + 8*h, 8*j + 2*(lane % 4) + c]
                if swapped:
                    row, col = q + 8*j + c, p + 8*h
                else:
                    row, col = p + 8*h, q + 8*j + c
                if row < M and col < N: C[row, col] = val
    ok = np.array_equal(C, want)
    return ok

rng = np.random.default_rng(1)
shapes = [(4, 4, 4), (8, 8, 36), (136, 264, 72), (300, 260, 36), (260, 132, 40)]
allok = True
for (M, N, K) in shapes:
    for op_a, op_b in [('N','N'), ('N','T'), ('T','T'), ('T','N')]:
        r = run(M, N, K, op_a, op_b, rng)
        print(M, N, K, op_a+op_b, r); sys.stdout.flush()
        if r is False: allok = False
print("ALL OK" if allok else "FAIL")
