"""What the baseline families share: the parameter pattern, the data-file loader with its unit rule."""
