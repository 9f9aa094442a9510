from dualarr.vectorise import simplify as S, bot as B
from dualarr.lang import terms as T
for c in (T.MapAccum, T.LoopOutput):
    if c not in S.SMART_CONSTRUCTORS:
        S.SMART_CONSTRUCTORS.register(c)(S.SMART_CONSTRUCTORS[T.Var])
    if c not in S.INT_RANGES:
        S.INT_RANGES.register(c)(S.INT_RANGES[T.Structural])
