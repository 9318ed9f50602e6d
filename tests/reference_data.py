"""Numbers transcribed from the project's reference notes (robots.md, tables 1(a) and 2(a)) that the
models are checked against: joint name, axis (torso frame at q = 0), lower and upper limit (rad)."""

NAO_JOINTS = [
    ("HeadYaw", (0, 0, 1), -2.0857, 2.0857),
    ("HeadPitch", (0, 1, 0), -0.6720, 0.5149),
    ("LShoulderPitch", (0, 1, 0), -2.0857, 2.0857),
    ("LShoulderRoll", (0, 0, 1), -0.3142, 1.3265),
    ("LElbowYaw", (1, 0, 0), -2.0857, 2.0857),
    ("LElbowRoll", (0, 0, 1), -1.5446, -0.0349),
    ("LWristYaw", (1, 0, 0), -1.8239, 1.8239),
    ("RShoulderPitch", (0, 1, 0), -2.0857, 2.0857),
    ("RShoulderRoll", (0, 0, 1), -1.3265, 0.3142),
    ("RElbowYaw", (1, 0, 0), -2.0857, 2.0857),
    ("RElbowRoll", (0, 0, 1), 0.0349, 1.5446),
    ("RWristYaw", (1, 0, 0), -1.8239, 1.8239),
    ("LHipYawPitch", (0, 0.707106, -0.707106), -1.1453, 0.7407),
    ("LHipRoll", (1, 0, 0), -0.3794, 0.7905),
    ("LHipPitch", (0, 1, 0), -1.5359, 0.4840),
    ("LKneePitch", (0, 1, 0), -0.0923, 2.1125),
    ("LAnklePitch", (0, 1, 0), -1.1894, 0.9226),
    ("LAnkleRoll", (1, 0, 0), -0.3978, 0.7690),
    ("RHipYawPitch", (0, 0.707106, 0.707106), -1.1453, 0.7407),
    ("RHipRoll", (1, 0, 0), -0.7905, 0.3794),
    ("RHipPitch", (0, 1, 0), -1.5359, 0.4840),
    ("RKneePitch", (0, 1, 0), -0.1030, 2.1201),
    ("RAnklePitch", (0, 1, 0), -1.1863, 0.9320),
    ("RAnkleRoll", (1, 0, 0), -0.7690, 0.3979),
]
NAO_MASS = 5.359  # kg, sum of table 1(b)
NAO_TORSO_HEIGHT = 0.333  # m, straight legs: 0.085 + 0.100 + 0.1029 + 0.04519

WOLFGANG_JOINTS = [
    ("HeadPan", (0, 0, 1), -2.35619, 2.35619),
    ("HeadTilt", (0, -1, 0), -1.923, 1.24),
    ("LShoulderPitch", (0, 1, 0), -3.14159, 3.14159),
    ("LShoulderRoll", (-1, 0, 0), -3.1416, 0.33),
    ("LElbow", (0, -1, 0), -1.5708, 0.78),
    ("RShoulderPitch", (0, -1, 0), -3.14159, 3.14159),
    ("RShoulderRoll", (-1, 0, 0), -0.33, 3.1416),
    ("RElbow", (0, 1, 0), -0.78, 1.5708),
    ("LHipYaw", (0, 0, -1), -1.5708, 1.5708),
    ("LHipRoll", (1, 0, 0), -1.6, 1.9),
    ("LHipPitch", (0, -1, 0), -0.79, 2.77),
    ("LKnee", (0, 1, 0), -0.2, 2.8),
    ("LAnklePitch", (0, 1, 0), -1.42, 0.37),
    ("LAnkleRoll", (-0.9659, 0, -0.2588), -1.58, 1.4),
    ("RHipYaw", (0, 0, -1), -1.5708, 1.5708),
    ("RHipRoll", (1, 0, 0), -1.9, 1.6),
    ("RHipPitch", (0, 1, 0), -2.77, 0.79),
    ("RKnee", (0, -1, 0), -2.8, 0.2),
    ("RAnklePitch", (0, -1, 0), -0.37, 1.42),
    ("RAnkleRoll", (-0.9659, 0, -0.2588), -1.4, 1.58),
]
WOLFGANG_MASS = 7.5  # kg, spline stand-up paper
WOLFGANG_TRUNK_HEIGHT = 0.38  # m, dynup walkready trunk_height
