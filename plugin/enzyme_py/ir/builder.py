class IRBuilder: pass
