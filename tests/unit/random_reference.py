# Derives the pinned values of tests/unit/initial_and_weights.cpp ("stream_seed, uniform() and
# normal() give the pinned values"): run with /usr/bin/python3 and compare its output.
# Independent reference for nadyn's random streams: MT19937-64 from Matsumoto & Nishimura's
# published algorithm (mt19937-64.c), SplitMix64 finaliser, 53-bit uniform, Marsaglia polar.
import math
M64 = (1 << 64) - 1
def splitmix_stream_seed(seed, stream):
    z = (seed + 0x9E3779B97F4A7C15 * (stream + 1)) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)
class MT64:
    NN, MM = 312, 156
    A = 0xB5026F5AA96619E9
    UM, LM = 0xFFFFFFFF80000000, 0x7FFFFFFF
    def __init__(self, seed):
        self.mt = [0] * self.NN
        self.mt[0] = seed & M64
        for i in range(1, self.NN):
            self.mt[i] = (6364136223846793005 * (self.mt[i-1] ^ (self.mt[i-1] >> 62)) + i) & M64
        self.mti = self.NN
    def next(self):
        if self.mti >= self.NN:
            mt = self.mt
            for i in range(self.NN):
                x = (mt[i] & self.UM) | (mt[(i + 1) % self.NN] & self.LM)
                xa = x >> 1
                if x & 1: xa ^= self.A
                mt[i] = mt[(i + self.MM) % self.NN] ^ xa
            self.mti = 0
        x = self.mt[self.mti]; self.mti += 1
        x ^= (x >> 29) & 0x5555555555555555
        x ^= (x << 17) & 0x71D67FFFEDA60000
        x ^= (x << 37) & 0xFFF7EEE000000000
        x ^= x >> 43
        return x & M64
class Source:
    def __init__(self, seed): self.e = MT64(seed); self.spare = None
    def uniform(self): return (self.e.next() >> 11) * 2.0**-53
    def normal(self):
        if self.spare is not None:
            s_ = self.spare; self.spare = None; return s_
        while True:
            u = 2.0 * self.uniform() - 1.0
            v = 2.0 * self.uniform() - 1.0
            s = u * u + v * v
            if not (s >= 1.0 or s == 0.0): break
        f = math.sqrt(-2.0 * math.log(s) / s)
        self.spare = v * f
        return u * f
# Known answer of the reference generator: the 10000th output of mt19937_64 seeded 5489 is
# 9981545732273789042 (C++ standard, [rand.predef]).
e = MT64(5489)
for _ in range(9999): e.next()
assert e.next() == 9981545732273789042
for seed, stream in [(1, 1), (1, 2), (42, 1000), (0, 0), (2**64 - 1, 7)]:
    print("stream_seed", seed, stream, hex(splitmix_stream_seed(seed, stream)))
s = Source(splitmix_stream_seed(1, 1))
print("uniform", [float.hex(s.uniform()) for _ in range(4)])
s = Source(splitmix_stream_seed(1, 2))
print("normal", [float.hex(s.normal()) for _ in range(6)])
