"""Classical controllers (robot-side code: they see only ``Sensors`` and the robot's own model)."""
