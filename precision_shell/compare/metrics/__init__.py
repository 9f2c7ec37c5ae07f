"""The msaccucmp metrics: computed exactly, fast, and printed as msaccucmp prints them."""
