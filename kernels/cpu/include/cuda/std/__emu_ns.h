// cuda::std is the host std here (qualified lookup follows the using-directive).
#pragma once
namespace cuda { namespace std { using namespace ::std; } }
