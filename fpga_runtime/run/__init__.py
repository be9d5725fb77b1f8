"""Running a build: the Session, the concurrent scheduler, its policy, and execution traces."""
