"""Estimators behind methods (torch, scikit-learn), kept out of the discovered `methods` package:
imported only when such a method runs, never when a sweep is parsed."""
