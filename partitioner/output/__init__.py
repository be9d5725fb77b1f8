"""Writing a build folder: the plan and subgraph files, staging, report.md and the picture."""
