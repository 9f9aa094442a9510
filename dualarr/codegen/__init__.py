"""Code generation (paper §7.5): a let-program as one Python function over an array
namespace (NumPy, CuPy, any array API)."""
