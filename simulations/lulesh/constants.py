"""LULESH 2.0's constants (the reference's Domain defaults), as plain Python floats: kernels
capture them as compile-time constants. Fractions are computed by division once, as the
reference does (``2/3`` is ``2.0 / 3.0``, then multiplied)."""

E_CUT = 1.0e-7
P_CUT = 1.0e-7
Q_CUT = 1.0e-7
V_CUT = 1.0e-10
U_CUT = 1.0e-7
HGCOEF = 3.0
SS4O3 = 4.0 / 3.0  # defined by the reference, unused by its kernels
QSTOP = 1.0e12
MONOQ_MAX_SLOPE = 1.0
MONOQ_LIMITER_MULT = 2.0
QLC_MONOQ = 0.5
QQC_MONOQ = 2.0 / 3.0
QQC = 2.0
EOSVMAX = 1.0e9
EOSVMIN = 1.0e-9
PMIN = 0.0
EMIN = -1.0e15
DVOVMAX = 0.1
REFDENS = 1.0
PTINY = 1.0e-36
SSC_FLOOR = 0.1111111e-36  # sound speed: if ssc <= SSC_FLOOR then SSC_MIN else sqrt(ssc)
SSC_MIN = 0.3333333e-18
C1S = 2.0 / 3.0  # gamma - 1 of the ideal gas (CalcPressureForElems)
SIXTH = 1.0 / 6.0

# time controls
DTFIXED = -1.0e-6
STOPTIME = 1.0e-2
DELTATIMEMULTLB = 1.1
DELTATIMEMULTUB = 1.2
DTMAX = 1.0e-2
EBASE = 3.948746e7  # energy deposited at the origin for s = 45, scaled by (s/45)^3
