"""Speed benchmarks: simulation and environment rates (speed), controller and kinematics compute (registered protocols)."""
