"""One ``Policy`` interface over everything that acts (classical controllers, SB3 models, residuals)."""
