"""ReLU soft committee machines: on-line learning ODEs, simulations, stability.

Reproduces Straat & Biehl, *On-line learning dynamics of ReLU neural networks
using statistical physics techniques* (ESANN 2019, arXiv 1903.07378), with the
classical erf committee (Saad & Solla 1995) for comparison.

* :mod:`galu.scm.averages`, :mod:`galu.scm.relu_quadruple`: Gaussian averages
  of pairs, triples and quadruples of activations.
* :mod:`galu.scm.odes`: order-parameter ODEs for any K, M (exact in eta, or the
  paper's small-eta form), integration on a log-spaced alpha grid.
* :mod:`galu.scm.simulation`: finite-N on-line SGD across seeds (torch).
* :mod:`galu.scm.stability`: fixed points, Jacobians, eigenvalues.
* :mod:`galu.scm.loop_reference`: plain-loop ODEs (test oracle, benchmark baseline).
"""
