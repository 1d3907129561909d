// Package fit fits model parameters to measurements: a straight line by least
// squares (for costs that grow with bytes, e.g. cache management time per
// byte loaded), and a general bounded least-squares fit of a simulator's
// per-token predictions to measured per-token times (Nelder–Mead from gonum's
// optimize, in log space so every parameter stays positive), with standard
// errors from the numerical Jacobian at the optimum (σ²(JᵀJ)⁻¹, the usual
// Gauss–Newton estimate).
//
// Every fitted parameter reports its value, its standard error and whether
// the data identified it: a parameter whose column of the Jacobian is
// (nearly) zero or (nearly) a multiple of another's is reported as not
// identifiable and keeps its starting value.
package fit
