"""Trainable models behind methods (torch); imported only when such a method runs."""
