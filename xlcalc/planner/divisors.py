"""The divisors of a whole number, from its prime factors (Miller-Rabin and Pollard's rho): the planner's TP,
expert and micro-batch choices, without a loop over every count up to the number."""

from __future__ import annotations

import functools
import math
from collections import Counter

__all__ = ["divisors", "is_prime", "prime_factors"]


def is_prime(n: int) -> bool:
    """Miller-Rabin with the first 12 primes as bases: exact for every n < 3.3e24."""
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    if n in small:
        return True
    if any(n % p == 0 for p in small):
        return False
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _split(n: int) -> int:
    """A proper factor of the composite odd ``n`` (Pollard's rho, Brent's variant of the cycle search)."""
    for c in range(1, n):
        x = y = 2
        g = 1
        while g == 1:
            x = (x * x + c) % n
            y = (y * y + c) % n
            y = (y * y + c) % n
            g = math.gcd(abs(x - y), n)
        if g != n:
            return g
    raise ArithmeticError(n)  # not reached for a composite n


def prime_factors(n: int) -> list[int]:
    out: list[int] = []
    for p in (2, 3, 5, 7, 11, 13):
        while n % p == 0:
            out.append(p)
            n //= p
    stack = [n] if n > 1 else []
    while stack:
        m = stack.pop()
        if is_prime(m):
            out.append(m)
        else:
            f = _split(m)
            stack += [f, m // f]
    return out


@functools.lru_cache(maxsize=64)
def divisors(n: int) -> list[int]:
    """The divisors of ``n`` in order, built from its prime factors (Pollard's rho): work that grows with the
    number of divisors (at most a few tens of thousands below 1e15), never a loop over every count up to ``n``."""
    divs = [1]
    for prime, k in Counter(prime_factors(n)).items():
        divs = [d * prime ** e for d in divs for e in range(k + 1)]
    return sorted(divs)

