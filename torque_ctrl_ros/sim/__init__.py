"""The simulator's ROS-free parts: the MuJoCo plant (:mod:`.plant`) and the rules for which
commands drive it (:mod:`.commands`). Import from the module you need: the rules load no MuJoCo."""
