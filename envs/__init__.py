"""Robot descriptions, the simulation core (servos, sensors, terrain, conditions) and, later, the
Gymnasium tasks."""
