"""The error a user can fix: printed as one clear line naming the fix, exit code 2, no traceback."""


class UserError(Exception):
    pass
