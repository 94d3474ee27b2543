"""Thin wrappers that give PufferLib policies the interfaces of other learning libraries."""
