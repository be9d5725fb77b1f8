"""Checking results: int8 accuracy and detections against float, the backend ladder, frames and images."""
