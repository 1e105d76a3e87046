int nest_level2(int x);
int nest_level3(int x);
int nest_level4(int x);
int nest_level5(int x);
