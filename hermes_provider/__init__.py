"""The Hermes Agent memory provider and its installer."""
