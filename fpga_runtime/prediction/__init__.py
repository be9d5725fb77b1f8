"""Predicting a build on a board without running it: virtual time, CPU and transfer timing, RTL profiles."""
